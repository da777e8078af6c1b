import { AjvCompiler, type BuildCompilerFromPool } from '@fastify/ajv-compiler';

const compilerPool = AjvCompiler();

/**
 * Fastify's validator factory with one difference per part of the request: URLs carry only
 * text, so path and query parameters are coerced to their schema types (`?limit=50` is the
 * integer 50, a repeated parameter an array); a JSON body says its types itself, so a body is
 * never coerced and `{"id": false}` or `{"polls": 0}` is refused instead of becoming "false"
 * or false.
 */
export const buildRequestValidator: BuildCompilerFromPool = (externalSchemas, options) => {
  const coercing = compilerPool(externalSchemas, options);
  const exact = compilerPool(externalSchemas, { ...options, customOptions: { ...options?.customOptions, coerceTypes: false } } as typeof options);
  return (route) => (route.httpPart === 'body' ? exact(route) : coercing(route));
};
