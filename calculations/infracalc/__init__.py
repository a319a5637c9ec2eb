"""infra-calc: exact FLOPs, bytes, memory and roofline bounds of LLMs."""

__version__ = "0.1.0"
