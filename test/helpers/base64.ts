/** The base64 of a string's UTF-8 bytes, or of bytes: a value as SET takes it and GET's VALUE reply carries it. */
export function b64(value: string | Uint8Array): string {
  return Buffer.from(value).toString('base64');
}
