import { createInfra, createLogger, loadConfig } from "@feeds/kit";
import { createStaffOperator } from "./operator-routes.js";
import { createOperatorRepository } from "./operator-repository.js";

/** Used by `npm run create-staff`: creates a staff operator straight in the store. */
export async function createStaff(input: { email: string; name: string; password: string }): Promise<{ created: boolean }> {
  const config = loadConfig();
  const infra = createInfra(config, createLogger(config, "create-staff"), "create-staff");
  try {
    const operators = createOperatorRepository((await infra.mongo()).db);
    await operators.ensureIndexes();
    return { created: (await createStaffOperator(operators, input)).created };
  } finally {
    await infra.close();
  }
}
