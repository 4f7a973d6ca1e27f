"""The small target model on the device: the onnxruntime engine, the TargetLM interface, its limits."""
