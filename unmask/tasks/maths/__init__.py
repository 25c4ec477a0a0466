"""Maths word problems (GSM8K-style): synthetic multi-step arithmetic and gsm_symbolic problems."""
