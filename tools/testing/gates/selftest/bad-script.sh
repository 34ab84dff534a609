#!/bin/bash
# Deliberately broken sample for the gate self-test: shellcheck must
# report the unquoted expansion.  Never run.
rm -rf $1/tmp
