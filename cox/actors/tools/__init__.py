"""Built-in tools and the ToolCall actor that runs each call."""
