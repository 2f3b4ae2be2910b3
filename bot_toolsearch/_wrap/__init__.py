"""The drop-in ``openai`` client wrapper: tool search underneath any framework.

``wrap_openai(client)`` returns a client whose ``chat.completions.create`` and
``responses.create`` send the model a projection of the caller's full tool list (always-loaded
+ loaded + ``tool_search`` and the deferred-tool directory), answer ``tool_search`` calls
themselves within the same ``create`` call, and hand every other call back to the caller.
"""
