import { describe, expect, it } from 'vitest';
import type { Message } from '../../schema/scored-data.js';
import { groupImages, imageDataUrl, imageMediaType, imagePart, isImageUrlPart, messageImages, parseDataUrl, textPart } from './images.js';
import { encodePng } from './png.js';

const png = encodePng({ width: 1, height: 1, data: Uint8Array.from([255, 0, 0, 255]) });
const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]);
const webp = Buffer.from('RIFF\u0000\u0000\u0000\u0000WEBPVP8 ', 'latin1');

describe('image bytes and data URLs', () => {
  it('tells PNG, JPEG, GIF and WebP apart by their signatures', () => {
    expect(imageMediaType(png)).toBe('image/png');
    expect(imageMediaType(jpeg)).toBe('image/jpeg');
    expect(imageMediaType(Buffer.from('GIF89a'))).toBe('image/gif');
    expect(imageMediaType(webp)).toBe('image/webp');
    expect(imageMediaType(Buffer.from('hello world!'))).toBeUndefined();
  });

  it('writes a base64 data URL and reads the same bytes back', () => {
    const url = imageDataUrl(png);
    expect(url).toBe(`data:image/png;base64,${png.toString('base64')}`);
    expect(parseDataUrl(url)).toEqual({ mediaType: 'image/png', bytes: png });
    expect(parseDataUrl('data:image/jpeg;name=x.jpg;base64,/9j/')).toEqual({
      mediaType: 'image/jpeg',
      bytes: Buffer.from([0xff, 0xd8, 0xff]),
    });
    expect(parseDataUrl('https://example.com/cat.png')).toBeNull();
    expect(() => imageDataUrl(Buffer.from('plain text'))).toThrow(/pass the media type/);
    expect(imageDataUrl(Buffer.from('plain text'), 'image/x-raw')).toMatch(/^data:image\/x-raw;base64,/);
  });

  it('makes OpenAI content parts', () => {
    expect(imagePart(png)).toEqual({ type: 'image_url', image_url: { url: imageDataUrl(png) } });
    expect(imagePart('https://example.com/cat.png', { detail: 'low' })).toEqual({
      type: 'image_url',
      image_url: { url: 'https://example.com/cat.png', detail: 'low' },
    });
    expect(textPart('hi')).toEqual({ type: 'text', text: 'hi' });
    expect(isImageUrlPart(imagePart(png))).toBe(true);
    expect([textPart('x'), { type: 'image_url' }, null, 'image_url'].some(isImageUrlPart)).toBe(false);
  });
});

describe("a group's images, as Atropos sends them", () => {
  const b64 = png.toString('base64');
  const asked = (...content: unknown[]): Message[] => [
    { role: 'system', content: 'Look.' },
    { role: 'user', content },
    { role: 'assistant', content: 'red' },
  ];

  it('lists the images of a conversation in order: base64 of data URLs, other URLs as they are', () => {
    const messages = asked(imagePart(png), textPart('and'), imagePart('https://example.com/cat.png'));
    expect(messageImages(messages)).toEqual([b64, 'https://example.com/cat.png']);
    expect(messageImages([{ role: 'user', content: 'no parts' }])).toEqual([]);
  });

  it('gives one entry per sequence: the base64 string, a list for several, null for none', () => {
    expect(groupImages([asked(imagePart(png), textPart('q')), asked(imagePart(png), textPart('q'))])).toEqual([b64, b64]);
    expect(groupImages([asked(imagePart(png), imagePart(jpeg)), asked(textPart('q'))])).toEqual([[b64, jpeg.toString('base64')], null]);
  });

  it('is null for a text-only group, so text environments send what they sent before', () => {
    expect(groupImages([asked(textPart('q')), [{ role: 'user', content: 'q' }]])).toBeNull();
    expect(groupImages([])).toBeNull();
  });
});
