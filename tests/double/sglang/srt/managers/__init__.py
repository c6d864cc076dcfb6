"""Processes of the SGLang test double's tree."""
