"""Kernel Lab: kernels -> measure -> runs -> judge -> render -> public.

Modules, in the order data flows through them:
  measure    run profiles on a CUDA GPU and store one JSON artifact per run (build.py --run)
  artifacts  the run artifact's schema: validate, migrate, load, write atomically
  content    load and cross-check site_src/ (experiments, decisions) with the runs
  judge      compute verdicts from the runs, and check decisions against them
  render     turn the judged content into pages (Jinja2 templates)
  site       write the pages into public/ atomically
  cli        the command line behind build.py
"""
