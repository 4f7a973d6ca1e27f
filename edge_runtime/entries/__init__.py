"""The semantic-function model: declarations, memory layers, validation and sandbox, registry, compiler."""
