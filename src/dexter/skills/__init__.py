"""Skills: reusable research workflows written as `SKILL.md` files.

`discover_skills(home)` finds them (bundled < `~/.dexter/skills` < `<home>/skills`, by name);
the `skill` tool (`dexter.tools.skill.SkillTool`) hands a skill's instructions to the model, and
`dexter.tools.skill.skills_prompt` lists them in the system prompt.
"""

from dexter.skills.discovery import (
    BUNDLED_DIR,
    Skill,
    SkillCatalog,
    SkillError,
    SkillSource,
    SkillWarning,
    default_user_dir,
    discover_skills,
    load_skill,
    load_skills,
    parse_skill,
)

__all__ = [
    "BUNDLED_DIR",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillSource",
    "SkillWarning",
    "default_user_dir",
    "discover_skills",
    "load_skill",
    "load_skills",
    "parse_skill",
]
