"""Filesystem tools, confined to the workspace."""

from dexter.tools.fs.edit_file import EditFileArgs, EditFileTool, plan_edit, preview_edit
from dexter.tools.fs.paths import resolve_in_workspace
from dexter.tools.fs.read_file import ReadFileArgs, ReadFileTool
from dexter.tools.fs.write_file import WriteFileArgs, WriteFileTool

__all__ = [
    "EditFileArgs",
    "EditFileTool",
    "ReadFileArgs",
    "ReadFileTool",
    "WriteFileArgs",
    "WriteFileTool",
    "plan_edit",
    "preview_edit",
    "resolve_in_workspace",
]
