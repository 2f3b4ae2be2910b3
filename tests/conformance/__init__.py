"""Real clients of OpenAI's tool-search dialect through every door, against a strict upstream."""
