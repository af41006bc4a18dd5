"""Deploying a finetuned model: its scores as an ONNX graph (fp32, or int8 through onnxruntime's dynamic
quantization), written beside its tokenizer, label map and card, and loaded back as a unit whose
predictions are the task's own (inference/ takes such a directory wherever it takes a model)."""
