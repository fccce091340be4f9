import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Tokenizer } from '../../src/inference/tokenizer.js';
import type { Responder } from './scripted-openai.js';

/** The shipped bugfix tasks, with the fix each was checked with. */
export interface ScriptedTask {
  id: string;
  statement: string;
  fix: { file: string; find: string; replace: string };
}

export const BUGFIX_TASKS: ScriptedTask[] = readFileSync(
  fileURLToPath(new URL('../../environments/bugfix/data/tasks.jsonl', import.meta.url)),
  'utf8',
)
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as ScriptedTask);

const block = (thought: string, command: string) => `THOUGHT: ${thought}\n\n\`\`\`mswea_bash_command\n${command}\n\`\`\``;

/** A Python program that replaces `find` by `replace` in `file`: how the scripted model edits. */
const editCommand = (file: string, find: string, replace: string) =>
  `python3 - <<'PYEOF'\nimport pathlib\np = pathlib.Path(${JSON.stringify(file)})\np.write_text(p.read_text().replace(${JSON.stringify(find)}, ${JSON.stringify(replace)}))\nPYEOF`;

/**
 * The reply of step `step` of a scripted episode of mini-swe-agent's text protocol: look at the repository, edit it
 * (the task's fix when `solves`, else a harmless wrong edit), run the tests, submit.
 */
export function scriptedReply(task: ScriptedTask, step: number, solves: boolean): string {
  switch (step) {
    case 0:
      return block('I look at the repository first.', 'ls && cat *.py | head -50');
    case 1:
      return solves
        ? block('This line is the bug; I fix it.', editCommand(task.fix.file, task.fix.find, task.fix.replace))
        : block('I add a comment, which will not fix anything.', `echo '# looked at' >> ${task.fix.file}`);
    case 2:
      return block('Now I run the tests.', 'python3 -m unittest -q 2>&1 | tail -3');
    default:
      return block('Done.', 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT');
  }
}

/**
 * A responder for {@link startScriptedOpenAI} that plays mini-swe-agent's protocol over token-id prompts: it finds the
 * task by its statement in the decoded prompt and its step by the assistant turns there, and solves the tasks
 * `solves` says, given how many edits of that task it was asked for before (so that a group's samples can differ).
 * Each call's decoded prompt is kept in `prompts`, by call index.
 */
export function sweResponder(tokenizer: Tokenizer, solves: (task: ScriptedTask, edits: number) => boolean) {
  const prompts: string[] = [];
  const edits = new Map<string, number>();
  const responder: Responder = (body, index) => {
    const prompt = tokenizer.decode(body.prompt as number[]);
    prompts[index] = prompt;
    const task = BUGFIX_TASKS.find((t) => prompt.includes(t.statement));
    const step = prompt.split('<|im_start|>assistant').length - 2;
    let solved = false;
    if (task && step === 1) {
      solved = solves(task, edits.get(task.id) ?? 0);
      edits.set(task.id, (edits.get(task.id) ?? 0) + 1);
    }
    const text = task ? scriptedReply(task, step, solved) : block('No task found.', 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT');
    const ids = [...tokenizer.encode(text, { addSpecialTokens: false }), tokenizer.eos!.id];
    return { choices: [{ text, tokenIds: ids, logprobs: ids.map((_, j) => -((j % 7) + 1) / 8) }] };
  };
  return { responder, prompts };
}
