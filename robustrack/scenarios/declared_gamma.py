"""Γ of a user's scenario: declared, or refused with the command that computes it (docs/guide/command-line.md,
"A robot from its URDF in a scenario file").

The seed's kinds (``triple-pendulum``, ``duffing-tracking``) carry the seed's Γ as their default. A user's plant — a
``urdf`` robot, or a ``python`` factory with a compensator built from ``[compensator]`` — has no such value: its
``uncertainty.gamma`` defaults to :data:`UNSET`, and building such a scenario is refused with a message naming the
key and the command that computes Γ from the declared uncertainty (``robustrack gamma NAME``: a Monte Carlo of
max_t ‖δq‖∞ along the nominal motion; 11 s for ``ur5-payload-sensed``, 86 s for a 7-joint Panda at the default 1014
samples, too long to run silently at every build, and a campaign builds the scenario in every worker). The studies
that do not need Γ — the Γ Monte Carlo itself, and ``tune`` with targets, which estimates Γ before it verifies — build the scenario
through :func:`without_gamma`.
"""

from __future__ import annotations

import math

from ..errors import ScenarioError

__all__ = ["UNSET", "PLACEHOLDER", "gamma_unset", "refuse_unset_gamma", "without_gamma"]

#: The default ``uncertainty.gamma`` of a user's plant: not declared (a user cannot type it: the loader refuses a
#: non-finite number, and the TOML writer leaves the key out).
UNSET = math.nan
#: What an undeclared Γ is built with where Γ is not used: the compensator's design value (AUTOMATIC_GAMMA).
PLACEHOLDER = -1.0


def gamma_unset(config: dict) -> bool:
    """Whether a scenario's configuration leaves ``uncertainty.gamma`` undeclared (:data:`UNSET`).

    Parameters
    ----------
    config : dict
        A validated configuration (``Scenario.config``).

    Returns
    -------
    bool
    """
    value = (config.get("uncertainty") or {}).get("gamma")
    return isinstance(value, float) and math.isnan(value)


def refuse_unset_gamma(name: str, config: dict, path: str | None = None) -> None:
    """Raise when ``uncertainty.gamma`` is undeclared: the key to set and the command that computes it
    (:meth:`Scenario.build <robustrack.scenarios.Scenario.build>` calls it after the scenario's own checks).

    Parameters
    ----------
    name : str
        The scenario's name.
    config : dict
        Its configuration.
    path : str, optional
        The file it was loaded from: the commands the message gives take it (a catalog scenario: its name).

    Returns
    -------
    None

    Raises
    ------
    ScenarioError
    """
    if not gamma_unset(config):
        return
    import shlex

    target = shlex.quote(str(path)) if path else name
    raise ScenarioError(
        f"scenario {name!r} declares no Γ (`uncertainty.gamma`, the bound on ‖δq‖∞ its promised bounds are judged "
        f"at), and a default from another plant would be wrong for this one. Compute it from the declared "
        f"uncertainty with `robustrack gamma {target}` (a Monte Carlo along the nominal motion: 11 s for the "
        "6-joint UR5, 86 s for a 7-joint arm) and set its Γ′: `uncertainty.gamma = …` in [uncertainty] (or --set "
        "uncertainty.gamma=…), and the "
        "compensator's design value (`compensator.gss.gamma_prime`, `compensator.gd.gamma`) at least as large. "
        f"`robustrack tune {target} --target-e …` estimates Γ itself.")


def without_gamma(scenario):
    """The scenario, buildable for a study that does not use Γ (it estimates it).

    Parameters
    ----------
    scenario : Scenario

    Returns
    -------
    Scenario
        With an undeclared ``uncertainty.gamma`` set to :data:`PLACEHOLDER` (the compensator's design value); else
        the scenario itself.
    """
    if not gamma_unset(scenario.config):
        return scenario
    return scenario.with_overrides([f"uncertainty.gamma={PLACEHOLDER!r}"])
