/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// The console is served by the service under /console/ (server/console.go)
// and embedded in its binary from dist/, which is committed: the build must
// give the same bytes for the same sources, or CI's staleness check flaps.
export default defineConfig({
  base: '/console/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    // One stylesheet and one script: the console is small, and fewer files
    // make fewer requests and a shorter diff when dist/ changes.
    cssCodeSplit: false,
    // Vite's report of gzip sizes costs time and prints nothing we check.
    reportCompressedSize: false,
  },
  // `npm run dev`: the console with hot reload, the API of `make run`.
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
