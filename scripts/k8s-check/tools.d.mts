type BuildOptions = { root?: string; log?: (msg: string) => void };
export declare function buildHelm(opts?: BuildOptions): Promise<string>;
export declare function buildK8sCheck(opts?: BuildOptions): Promise<string>;
export declare function buildK8sTools(opts?: BuildOptions): Promise<{ helm: string; k8sCheck: string }>;
