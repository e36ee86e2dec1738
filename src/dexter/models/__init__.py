"""LLM wire protocols mapped to Dexter's own message and stream types."""

from dexter.models.base import Model
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningChunk,
    StreamChunk,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

__all__ = [
    "AssistantMessage",
    "ErrorKind",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ReasoningChunk",
    "StreamChunk",
    "SystemMessage",
    "TextChunk",
    "ToolCall",
    "ToolCallChunk",
    "ToolMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
]
