"""The lookup tool, served in its own process per rollout (verifiers runs `python -m lookup_env.tools`)."""

import verifiers.v1 as vf

CODES = {"amber": "A-17", "basalt": "B-42", "cobalt": "C-08"}


class CodesToolset(vf.Toolset[vf.ToolsetConfig]):
    TOOL_PREFIX = "codes"

    @vf.tool
    def lookup(self, name: str) -> str:
        """The code of a named thing."""
        return CODES.get(name.strip().lower(), "no such name")


if __name__ == "__main__":
    CodesToolset.run()
