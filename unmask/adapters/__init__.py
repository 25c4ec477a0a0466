"""Adapters that put other people's models behind the :class:`~unmask.denoiser.Denoiser` interface."""
