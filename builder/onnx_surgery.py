"""Graph rewrite of an exported decoder so the edge pays only for the logits it needs.

The exported graph multiplies every position's hidden state by the (tied, transposed)
embedding matrix. The extractor needs full logits only at the last position of free
generation; under a constraint it needs a handful of rows at a few positions, which the
runtime computes in numpy from the hidden states. So: expose the final hidden states as
an output ``hidden``, slice the last position before the head, and give the head its own
weight so the quantiser turns it into one int8 MatMul instead of transpose → dequantise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class SurgeryError(RuntimeError):
    """The graph does not have the decoder shape this rewrite expects."""


def split_head(src: Path, dst: Path) -> np.ndarray:
    """Rewrite ``src`` into ``dst``; returns the head weight as [vocab, hidden] float32."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    if "logits" not in producer or producer["logits"].op_type != "MatMul":
        raise SurgeryError("expected the logits to come from one MatMul (the LM head)")
    head = producer["logits"]
    hidden_name, weight_name = head.input
    inits = {t.name: t for t in graph.initializer}
    if weight_name in inits:
        weight = numpy_helper.to_array(inits[weight_name])  # [hidden, vocab]
    elif weight_name in producer and producer[weight_name].op_type == "Transpose":
        transpose = producer[weight_name]
        weight = numpy_helper.to_array(inits[transpose.input[0]]).T  # tied: embed [vocab, hidden]
        graph.node.remove(transpose)
    else:
        raise SurgeryError(f"cannot find the LM head weight behind {weight_name!r}")
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    own = "lm_head.weight_untied"
    graph.initializer.append(numpy_helper.from_array(weight, own))
    const = [
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "arc_last_start"),
        numpy_helper.from_array(np.array([np.iinfo(np.int64).max], dtype=np.int64), "arc_last_end"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "arc_seq_axis"),
    ]
    graph.initializer.extend(const)
    sliced = "arc_last_hidden"
    slice_node = helper.make_node(
        "Slice", [hidden_name, "arc_last_start", "arc_last_end", "arc_seq_axis"], [sliced], name="arc/last_position"
    )
    index = list(graph.node).index(head)
    graph.node.insert(index, slice_node)
    head.input[0] = sliced
    head.input[1] = own
    hidden_size = weight.shape[0]
    graph.output.append(
        helper.make_tensor_value_info(hidden_name, TensorProto.FLOAT, ["batch_size", "sequence_length", hidden_size])
    )
    # Rename the output for the runtime: an Identity keeps the internal name intact.
    graph.node.append(helper.make_node("Identity", [hidden_name], ["hidden"], name="arc/hidden"))
    graph.output.pop()
    graph.output.append(
        helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch_size", "sequence_length", hidden_size])
    )
    for output in graph.output:
        if output.name == "logits":
            dims = output.type.tensor_type.shape.dim
            if len(dims) == 3:
                dims[1].ClearField("dim_param")
                dims[1].dim_value = 1
    large = model.ByteSize() > 1_900_000_000
    onnx.save(model, str(dst), save_as_external_data=large, location=dst.name + ".data" if large else None)
    return weight.T.copy()
