import pngjs from 'pngjs';

/** An image as 8-bit RGBA pixels, row by row from the top left (4 bytes a pixel). */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/**
 * Encodes RGBA pixels as a PNG (pngjs, colour type RGBA, deflate level 9). The options are fixed, so the same pixels
 * give the same bytes under the same Node (zlib) version: a generated data set is reproducible byte for byte from
 * its seed.
 */
export function encodePng(image: RgbaImage): Buffer {
  if (image.data.length !== image.width * image.height * 4) {
    throw new Error(
      `encodePng: ${image.width}×${image.height} RGBA needs ${image.width * image.height * 4} bytes, got ${image.data.length}`,
    );
  }
  const png = new pngjs.PNG({ width: image.width, height: image.height });
  png.data = Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  return pngjs.PNG.sync.write(png, { colorType: 6, deflateLevel: 9 });
}

/** Decodes a PNG (any colour type pngjs reads) to RGBA pixels; throws on bytes that are not a valid PNG. */
export function decodePng(bytes: Uint8Array): RgbaImage {
  const png = pngjs.PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return { width: png.width, height: png.height, data: new Uint8Array(png.data) };
}
