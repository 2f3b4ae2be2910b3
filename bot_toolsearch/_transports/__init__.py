"""The model's wire: the two OpenAI API modes (Chat Completions and Responses) behind one interface,
the value types they share (``base``), canonical <-> wire tool-name encoding, and the recovery of
tool calls a model wrote as plain text."""
