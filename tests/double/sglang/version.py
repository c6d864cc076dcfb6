"""Version of SGLang that the test double plays."""

__version__ = "0.5.9"
