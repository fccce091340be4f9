/** The TLS test's workflow: one round trip through the frontend, the matching service and a worker. */
export async function greet(name: string): Promise<string> {
  return `hello ${name}`;
}
