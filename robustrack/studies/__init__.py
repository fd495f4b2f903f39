"""The seed studies of the motion a constraint produces, and of the force that produces it.

- :mod:`~robustrack.studies.constraint_models` — the constraint-model builders: the vakonomic model and
  Kozlov's limits (docs/theory/constraint-models.md);
- :mod:`~robustrack.studies.conflation` — the conflated (wrong) models of W ch. 3, checked against the
  fundamental equation;
- :mod:`~robustrack.studies.lusternik` — Lusternik's model of a force nonlinear in q̇;
- :mod:`~robustrack.studies.anatomy` — the anatomy of a control force (S 1.7): its power, work and workless part;
- :mod:`~robustrack.studies.power` — the power and work of Qᶜ and Qᵘ along a tracking run.

They stand on plants and constraints only (a layer below the tracking loop); the scenario kinds of
:mod:`robustrack.scenarios` and the scripts of docs/results run them.
"""
