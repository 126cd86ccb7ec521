"""Whether an abstraction says what its sources said, and only that: the verifier every distillation passes."""
