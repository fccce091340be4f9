/**
 * Clotho's public entry: what an environment imports (`import { defineEnvironment, z } from 'clotho'`).
 * Environments in this repository import only this, so each is an example a user can copy into a package of their own.
 */
export { z } from 'zod';
export {
  defineEnvironment,
  fromItems,
  toScoreResult,
  type AdvantageContext,
  type EnvConfig,
  type EnvironmentDefinition,
  type EvaluateContext,
  type EvaluationMetrics,
  type GroupContext,
  type ItemSource,
  type JudgeContext,
  type JudgeRequest,
  type Liveness,
  type MaybePromise,
  type ModelCallOptions,
  type ModelClient,
  type ParseContext,
  type RescoreContext,
  type ScoreContext,
  type ScoreResult,
  type StepContext,
  type StepResult,
  type ToolOffer,
  type ToolResultMessage,
} from './env/define.js';
export {
  defineTool,
  executeToolCall,
  parseToolCalls,
  toOpenAITool,
  ToolError,
  type MalformedToolCall,
  type Tool,
  type ToolCallOutcome,
  type ToolCallRequest,
  type ToolCallResult,
  type ToolContext,
} from './env/tools.js';
export { loadJsonl, resolveDataset, type DatasetSource } from './env/datasets.js';
export { loadTable, tableFormatOf, type LoadTableOptions, type TableFormat } from './env/tables.js';
export { ConfigError } from './env/config.js';
export { playEpisode, resolveEnvConfig, type PlayOptions } from './env/testing.js';
export type { AssistantTurn, Episode } from './env/episode.js';
export { closeMcpServers, mcpTools, McpServerConfigSchema, type McpServerConfig } from './env/mcp.js';
export type { BaseEnvConfig } from './schema/config.js';
export type { Message } from './schema/scored-data.js';
export * from './env/answers.js';
export * from './env/length-penalty.js';
export * from './env/judging.js';
export * from './env/images.js';
export * from './env/png.js';
export * from './env/math-answer.js';
export * from './env/rewards.js';
export * from './env/sandbox.js';
export * from './env/games.js';
export * from './env/problems.js';
