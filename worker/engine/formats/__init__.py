"""Writing models: torch models exported to ONNX, torch.export programs and TorchScript, and int8 QDQ
quantization of ONNX models (`exporters`)."""
