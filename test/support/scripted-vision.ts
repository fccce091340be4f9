import { decodePng } from '../../src/kits/images/png.js';
import { imageMediaType, isImageUrlPart, parseDataUrl } from '../../src/kits/images/images.js';
import { openAIError, startScriptedOpenAI, type ScriptedOpenAI } from './scripted-openai.js';

/** A question the vision server knows, by the exact bytes of its image. */
export interface KnownImage {
  image: Buffer;
  question: string;
  answer: string;
}

/** What the server answers to a known image's `choice`-th sample. */
export type VisionPlan<K extends KnownImage> = (known: K, choice: number) => string;

export interface ScriptedVision extends ScriptedOpenAI {
  /** The image bytes of every request, in order of arrival, as decoded from their data URLs. */
  images: Buffer[];
  /** What was wrong with requests it refused; a test expects none. */
  refusals: string[];
}

/**
 * A scripted vision model over the scripted OpenAI server: it decodes each request's `image_url` data URL and answers
 * only when the bytes are exactly those of a known image (a decodable PNG when the data URL says PNG) and the request's
 * text is that image's question; anything else is refused with a 400, recorded in `refusals`, so a test fails on it.
 */
export async function startScriptedVision<K extends KnownImage>(known: readonly K[], plan: VisionPlan<K>): Promise<ScriptedVision> {
  const byImage = new Map(known.map((k) => [k.image.toString('base64'), k]));
  const images: Buffer[] = [];
  const refusals: string[] = [];
  const refuse = (why: string) => {
    refusals.push(why);
    return { status: 400, body: openAIError(why, 400) };
  };
  const server = await startScriptedOpenAI({
    responder(body) {
      const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
      const parts = messages.flatMap((m) => (m.role === 'user' && Array.isArray(m.content) ? (m.content as unknown[]) : []));
      const imageParts = parts.filter(isImageUrlPart);
      if (imageParts.length !== 1)
        return refuse(
          `expected one image part, got ${imageParts.length} (content ${JSON.stringify(messages.map((m) => typeof m.content))})`,
        );
      const decoded = parseDataUrl(imageParts[0]!.image_url.url);
      if (!decoded) return refuse(`not a base64 data URL: ${imageParts[0]!.image_url.url.slice(0, 40)}`);
      images.push(decoded.bytes);
      if (imageMediaType(decoded.bytes) !== decoded.mediaType)
        return refuse(`data URL says ${decoded.mediaType}, the bytes are ${imageMediaType(decoded.bytes)}`);
      if (decoded.mediaType === 'image/png') {
        try {
          decodePng(decoded.bytes);
        } catch (error) {
          return refuse(`the PNG does not decode: ${String(error)}`);
        }
      }
      const item = byImage.get(decoded.bytes.toString('base64'));
      if (!item) return refuse(`unknown image (${decoded.bytes.length} bytes)`);
      const text = parts.flatMap((p) => ((p as { type?: string }).type === 'text' ? [(p as { text: string }).text] : [])).join('\n');
      if (text !== item.question) return refuse(`image of "${item.question}" asked with "${text}"`);
      return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: plan(item, i) })) };
    },
  });
  return Object.assign(server, { images, refusals });
}
