"""Deploying a model: a finetuned model's scores or an encoder's sentence vectors as an ONNX graph (fp32, or
int8 through onnxruntime's dynamic or calibrated static quantization), or a finetuned model with torch.ao's
dynamic int8, written beside its tokenizer, label map and card, and loaded back as what inference/ asks
for (a unit whose predictions are the task's own, an encoder), wherever it takes a model."""
