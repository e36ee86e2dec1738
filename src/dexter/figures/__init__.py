"""The figure verifier: every number an answer states is looked for in what the run's tools
returned, or derived from such numbers, before the answer is sent."""
