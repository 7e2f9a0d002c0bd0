#!/usr/bin/env bash
# Regenerates docs/sample-page.png: the sample on its embedded fake backend, in headless Chromium,
# after two bursts, hedging switched on and an experiment started (SamplePageBrowserTests'
# picture test takes it). Needs chromium and chromium-driver (Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in chromium chromedriver; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "$tool is not installed (apt-get install chromium chromium-driver): docs/sample-page.png was NOT regenerated." >&2
    exit 1
  fi
done
rm -f sample-app/target/sample-page.png
mvn -B -q -pl sample-app -am verify -DskipITs \
  -Dtest='SamplePageBrowserTests#thePictureOfThePageShowsEveryFeatureAndCard' \
  -Dsurefire.failIfNoSpecifiedTests=false
if [ ! -s sample-app/target/sample-page.png ]; then
  echo "The browser test wrote no picture (was it skipped?): docs/sample-page.png was NOT regenerated." >&2
  exit 1
fi
cp sample-app/target/sample-page.png docs/sample-page.png
echo "docs/sample-page.png regenerated ($(date -u +%Y-%m-%dT%H:%MZ), $(chromium --version 2>/dev/null))"
