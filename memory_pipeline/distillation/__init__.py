"""The distillation contract every distiller keeps (prompts, parsing, validation) and the offline distiller."""
