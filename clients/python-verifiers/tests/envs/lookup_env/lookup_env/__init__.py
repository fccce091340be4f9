"""Multi-turn with a tool: the model looks a code up with `codes_lookup`, then answers with it.

A task-scoped `Toolset` (one tool server per rollout, as verifiers' glossary example has), offered to the model by
verifiers' chat program; `found` rewards an answer holding the code the tool returns.
"""

import verifiers.v1 as vf
from lookup_env.tools import CODES, CodesToolset

class LookupTaskConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class LookupData(vf.TaskData):
    code: str


class LookupTask(vf.Task[LookupData, vf.State, LookupTaskConfig]):
    @classmethod
    def toolsets(cls, config: LookupTaskConfig) -> list[vf.Toolset]:
        return [CodesToolset(config.tools)]

    @vf.reward(weight=1.0)
    async def found(self, trace: vf.Trace) -> float:
        return float(self.data.code in trace.last_reply)


class LookupConfig(vf.TasksetConfig):
    task: LookupTaskConfig = LookupTaskConfig()


class LookupTaskset(vf.Taskset[LookupTask, LookupConfig]):
    def load(self) -> list[LookupTask]:
        return [
            LookupTask(LookupData(name=name, prompt=f"Look up the code of {name} with the tool, then reply with it.", code=code), self.config.task)
            for name, code in CODES.items()
        ]


__all__ = ["LookupTaskset"]
