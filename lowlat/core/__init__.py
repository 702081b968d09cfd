"""The C core's Python face, one module per C concept of ``csrc/``: the
compiled extension (``_core``, built by ``_build.py`` at install time, loaded
by ``_lib.py``), the toolchain that builds C for the course, the argument
checks every wrapper runs before it calls C (``validate``), and the wrappers:
``pool``, ``spsc``, ``hist``, ``clock``, ``affinity``, ``wait``, ``stop``
(Ctrl-C inside a C call), ``logring`` (the asynchronous log) and
``pipeline``.  Nothing here imports the layers above it."""
