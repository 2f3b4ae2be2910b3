"""The ``bot-toolsearch`` command line: ``chat``/``ask``, ``search`` and ``catalog`` over a tool
catalog, ``config`` show/get/set/validate, and the ``demo`` entry; options shared between them."""
