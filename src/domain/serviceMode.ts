// Which money the service takes: the sandbox's simulated payments, or live money (product §2).
export type ServiceMode = "sandbox" | "live";
