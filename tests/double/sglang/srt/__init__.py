"""SGLang runtime (test double)."""
