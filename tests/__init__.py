"""packsolve's tests: unit/, integration/ and e2e/; helpers and test-only kinds in support/."""
