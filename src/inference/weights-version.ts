/**
 * The response header by which `clotho inference` tells which version of its weights produced a generation (the
 * version a trainer gave with `POST /v1/weights`): the version the request started on, even when a swap came
 * while it ran.
 */
export const WEIGHTS_VERSION_HEADER = 'x-clotho-weights-version';
