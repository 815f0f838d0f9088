import { ConfigError, loadConfig } from '../../src/config.ts';

/** What loadConfig refuses in these settings (one line per problem), or [] when it starts. */
export function configProblems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}
