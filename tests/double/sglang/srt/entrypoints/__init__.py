"""Entry points of the SGLang test double."""
