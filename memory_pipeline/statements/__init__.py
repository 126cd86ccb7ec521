"""What a statement says: the facts it states (facts), the values of a fact and what is left once they are
masked (values), a fact read as attribute and typed value (attributes)."""
