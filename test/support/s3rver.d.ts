declare module 's3rver' {
  /** The fake S3 server the tests start (s3rver 3: path-style buckets, multipart uploads, presigned URL expiry). */
  export default class S3rver {
    constructor(options: { port?: number; address?: string; silent?: boolean; directory: string; resetOnClose?: boolean; configureBuckets?: { name: string; configs?: string[] }[] });
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
