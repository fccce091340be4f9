import type { Message } from '../../schema/scored-data.js';

/** An OpenAI chat content part carrying an image (`{ type: 'image_url', image_url: { url } }`). */
export interface ImageUrlPart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

/** An OpenAI chat content part carrying text. */
export interface TextPart {
  type: 'text';
  text: string;
}

// Magic numbers of the formats vision servers accept (vLLM decodes them with PIL).
const SIGNATURES: [string, number[]][] = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
];

/** The media type of encoded image bytes from their signature (PNG, JPEG, GIF, WebP); undefined when unknown. */
export function imageMediaType(bytes: Uint8Array): string | undefined {
  for (const [type, signature] of SIGNATURES) if (signature.every((b, i) => bytes[i] === b)) return type;
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** A base64 `data:` URL of image bytes; the media type is read from the bytes unless given. */
export function imageDataUrl(bytes: Uint8Array, mediaType?: string): string {
  const type = mediaType ?? imageMediaType(bytes);
  if (type === undefined) throw new Error('imageDataUrl: the bytes are not a PNG, JPEG, GIF or WebP image; pass the media type');
  return `data:${type};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}`;
}

// `data:<type>[;param=value]*;base64,` (RFC 2397); only base64 payloads carry binary images.
const DATA_URL = /^data:([^;,]*)(?:;[^;,]*)*;base64,/;

/** The media type and bytes of a base64 `data:` URL; null for any other URL. */
export function parseDataUrl(url: string): { mediaType: string; bytes: Buffer } | null {
  const match = DATA_URL.exec(url);
  if (!match) return null;
  return { mediaType: match[1] ?? '', bytes: Buffer.from(url.slice(match[0].length), 'base64') };
}

/** An image content part for a chat message: bytes become a base64 `data:` URL, a string is used as the URL. */
export function imagePart(
  image: Uint8Array | string,
  options: { mediaType?: string; detail?: ImageUrlPart['image_url']['detail'] } = {},
): ImageUrlPart {
  const url = typeof image === 'string' ? image : imageDataUrl(image, options.mediaType);
  return { type: 'image_url', image_url: { url, ...(options.detail ? { detail: options.detail } : {}) } };
}

/** A text content part. */
export function textPart(text: string): TextPart {
  return { type: 'text', text };
}

/** Whether a content part is an OpenAI image part. */
export function isImageUrlPart(part: unknown): part is ImageUrlPart {
  if (typeof part !== 'object' || part === null) return false;
  const { type, image_url: imageUrl } = part as { type?: unknown; image_url?: unknown };
  return (
    type === 'image_url' && typeof imageUrl === 'object' && imageUrl !== null && typeof (imageUrl as { url?: unknown }).url === 'string'
  );
}

/**
 * The images of a conversation in order, as Atropos's multimodal environments put them in `images`: the base64 of a
 * `data:` URL (without its `data:…;base64,` prefix), any other URL as it is.
 */
export function messageImages(messages: readonly Message[]): string[] {
  return messages.flatMap((message) => {
    if (!Array.isArray(message.content)) return [];
    return message.content.filter(isImageUrlPart).map(({ image_url: { url } }) => {
      const prefix = DATA_URL.exec(url);
      return prefix ? url.slice(prefix[0].length) : url;
    });
  });
}

/**
 * A group's `images` field as Atropos fills it (ATROPOS-API.md §2.1): one entry per sequence, the sequence's image
 * as a base64 string, a list of them when it has several, null when it has none; and null for the whole field when
 * no sequence has an image, so text-only groups are unchanged.
 */
export function groupImages(conversations: readonly (readonly Message[])[]): (string | string[] | null)[] | null {
  const perSequence = conversations.map(messageImages);
  if (perSequence.every((images) => images.length === 0)) return null;
  return perSequence.map((images) => (images.length === 0 ? null : images.length === 1 ? images[0]! : images));
}
