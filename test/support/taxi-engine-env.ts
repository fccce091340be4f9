import taxi from '../../environments/games/taxi.js';

/**
 * Taxi for runs on the embedded engine: a random-weight model ends each turn at its first space (the scripted model
 * ignores stop strings), so that its replies, never actions, are played and penalised within a small token budget.
 */
export default { ...taxi, stop: [' '] };
