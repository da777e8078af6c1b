import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { readRepoFile } from './deploy-files';

// `engines` says which Node.js versions are tested: the machine's (CI's first run), the one CI
// installs for its second run, and the container image's.
const engines = (JSON.parse(readRepoFile('package.json')) as { engines: { node: string } }).engines.node;
const ciMajors = [...readRepoFile('.ci/run').matchAll(/\bnode@(\d+)\b/g)].map((match) => Number(match[1]));
const imageMajors = [...readRepoFile('Dockerfile').matchAll(/^FROM node:(\d+)/gm)].map((match) => Number(match[1]));

describe('Node.js versions', () => {
  it('runs the suite a second time on the current LTS, the one the image runs on', () => {
    expect(ciMajors).toEqual([24]);
    expect(new Set(imageMajors)).toEqual(new Set(ciMajors));
  });

  it('claims in engines the versions the suite runs on, and no later major', () => {
    expect(semver.satisfies(process.version, engines), `${process.version} in ${engines}`).toBe(true);
    const majors = [...ciMajors, ...imageMajors];
    expect(majors.length).toBeGreaterThan(0);
    for (const major of majors) expect(semver.satisfies(`${major}.0.0`, engines), `${major} in ${engines}`).toBe(true);
    const newest = Math.max(...majors);
    expect(semver.satisfies(`${newest + 1}.0.0`, engines)).toBe(false);
    expect(semver.satisfies(`${newest + 1}.0.0-pre`, engines, { includePrerelease: true })).toBe(false);
  });

  it('says in the README which versions are tested', () => {
    const tested = /^Tested on Node\.js .*$/m.exec(readRepoFile('README.md'))?.[0] ?? '';
    for (const range of engines.split('||')) {
      const major = semver.minVersion(range.trim())!.major;
      expect(tested, `Node.js ${major}`).toMatch(new RegExp(`\\b${major}\\b`));
    }
  });
});
