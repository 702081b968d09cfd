"""The measuring method every chapter uses: interleaved A/B rounds
(``interleave``), the readings computed from a run's numbers with the
decision rule (``rule``) and its printed threshold (``readings``), figures labelled with
unit and machine (``plot``), and profiles and scheduler traces of a child
process (``profiling``)."""
