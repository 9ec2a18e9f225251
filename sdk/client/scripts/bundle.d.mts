export declare const USER_CLIENT_LIMIT_BYTES: number;
export interface BundleInfo { code: Uint8Array; minified: number; gzipped: number; inputs: string[] }
export declare function bundleSizes(): Promise<{ userClient: BundleInfo; whole: BundleInfo }>;
