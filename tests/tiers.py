"""The suite's two tiers: which tests are ``slow`` besides those marked where they stand.

``python -m pytest -q -n 2`` (the README's command, what CI runs) runs the default tier; ``python -m pytest -q -n 2
-m slow`` runs the slow tier, and ``-m "slow or not slow"`` both (docs/getting-started.md, "Running the test suite").
A fresh clone's CI has ~270 s on two cores: ~35 s install and ~75 s the once-per-machine kernel compile leave about
150 s of wall for the tests, ~300 worker-seconds. The default tier keeps every unit, property and paper-reproduction
test and at least one test of each promise end to end; the slow tier holds what costs whole processes or a machine's
worth of work and repeats a behaviour the default tier keeps in a cheaper form.

:data:`SLOW` maps ``file::test`` (every parametrization of it) or ``file::test[id]`` (that one) to why it is in the
slow tier and what keeps its behaviour in the default tier. ``tests/conftest.py`` marks them at collection, and a
key whose file is collected but defines no test of that name is an error, so a renamed test cannot leave the tier
silently (a ``[id]`` key is checked by its test's name).
"""

#: Process-level faults: real processes killed, stopped or interrupted, and waits for timeouts.
FAULTS = {
    "test_campaign_faults.py::test_a_killed_scheduler_ends_the_campaign_in_one_line_keeping_finished_samples":
        "a Dask scheduler killed / stopped mid-campaign (~12 s each); the default tier keeps the Dask campaign "
        "(test_campaigns_dask.py) and a port that never answers (test_campaign_faults.py)",
    "test_campaign_faults.py::test_workers_killed_mid_campaign_leave_not_run_samples_that_resume_runs":
        "workers killed mid-campaign then resumed (~10 s); the default tier keeps resume after Ctrl-C "
        "(test_campaigns_resume.py::test_ctrl_c_stops_cleanly_and_says_how_to_resume)",
    "test_campaigns_resume.py::test_sigkill_at_a_random_moment_then_resume":
        "a campaign SIGKILLed at a random moment (~10 s); the default tier keeps the Ctrl-C stop and its resume",
    "test_python_kind.py::test_montecarlo_killed_and_resumed_gives_the_scripts_samples":
        "a python-kind campaign killed and resumed (~11 s); the default tier keeps resume after Ctrl-C and the "
        "python kind's campaigns (test_python_kind.py)",
    "test_compare.py::test_killed_comparison_resumes_from_its_store":
        "a comparison killed, then resumed from its store (~3 s each); the default tier keeps its resume in process "
        "(test_compare.py::test_resume_skips_finished_rows_and_reruns_failed_ones)",
    "test_campaigns.py::test_a_sample_that_kills_its_worker_is_recorded_and_the_others_finish":
        "a sample that kills its worker process (~8 s); the default tier keeps failed samples recorded and named "
        "(test_campaigns.py::test_failed_samples_are_recorded_counted_and_named)",
    "test_bad_input.py::test_ctrl_c_is_one_line_and_130[gamma]":
        "Ctrl-C during a Γ sampling (~4 s); the default tier keeps Ctrl-C during a run ([run]) and a campaign",
    "test_bad_input.py::test_a_scheduler_port_that_never_answers_is_one_line_within_the_timeout":
        "a scheduler that never answers, on the CLI (a 2.5-s wait); the default tier keeps the same wait from "
        "Python (test_campaign_faults.py::test_a_port_that_accepts_and_never_answers_is_refused_within_the_timeout)",
    "test_kernels.py::test_ctrl_c_during_a_cold_compile_exits_130_with_one_line":
        "Ctrl-C during a cold compile in a fresh cache (~4 s each); the default tier keeps Ctrl-C during a run",
    "test_portable_cache.py::test_ctrl_c_stops_compile_portable_with_one_line":
        "Ctrl-C during compile-portable (~4 s); the default tier keeps Ctrl-C during a run",
    # issue 55 item 4: measured with --durations on the shared machine (load 5-6), 2026-12-07
    "test_kernels.py::test_ctrl_c_inside_an_exec_still_exits_130[console script]":
        "a KeyboardInterrupt through an exec, from the console script (~0.8-1.5 s, a CLI process); the default tier "
        "keeps the same through `python -m` (test_kernels.py::test_ctrl_c_inside_an_exec_still_exits_130[-m])",
    "test_kernels.py::test_a_cache_folder_that_cannot_be_written_is_an_error_naming_the_variable":
        "an unwritable kernel cache, in a CLI process (~3.7 s); the default tier keeps it in process (test_kernels.py::"
        "test_a_cache_folder_that_cannot_be_written_is_one_line_naming_the_variable_in_process)",
}

#: Cold compiles, damaged caches and processes started at once: each pays the compile of a structure or of the
#: kernels again, in a cache of its own.
COMPILES = {
    "test_trust.py::test_copies_and_twins_of_a_factory_never_poison_each_others_compiled_functions":
        "three structures compiled cold in five processes (~35 s); the default tier keeps the keys of generated "
        "code by content (test_user_compiled.py::test_the_key_is_the_functions_content, "
        "test_model_cache.py::test_the_file_is_named_by_everything_its_text_depends_on)",
    "test_kernels.py::test_damaged_compiled_kernels_are_compiled_again":
        "the kernels recompiled after damage (~27 s); the default tier keeps a damaged generated file "
        "(test_model_cache.py::test_a_damaged_file_is_generated_again) and a warm run that compiles nothing "
        "(test_kernels.py::test_a_warm_run_compiles_nothing)",
    "test_kernels.py::test_a_damaged_generated_file_is_generated_again":
        "a structure generated and compiled again after damage (~10 s); the default tier keeps a damaged "
        "generated file (test_model_cache.py::test_a_damaged_file_is_generated_again)",
    "test_kernels.py::test_robustrack_compile_prepares_a_machine":
        "`robustrack compile` into an empty cache (~8 s); the session's own start does the same compile",
    "test_compiled.py::test_the_cache_is_reused_and_safe_for_two_processes_starting_at_once":
        "two processes compiling one structure at once (~10 s); no default-tier test starts two processes at "
        "once (test_model_cache.py's twin is slow too); it keeps a structure compiled once with one notice "
        "(test_kernels.py::test_a_new_structure_compiles_once_with_one_notice)",
    "test_model_cache.py::test_processes_generating_at_once_both_finish_with_whole_files":
        "two processes generating at once, each cold (~4 s); the default tier keeps a damaged file generated "
        "again (test_model_cache.py::test_a_damaged_file_is_generated_again)",
    "test_user_compiled.py::test_a_later_process_loads_the_compiled_functions_without_compiling":
        "a user's plant compiled cold, then loaded by a later process (~8 s); the default tier keeps a warm run "
        "that compiles nothing (test_kernels.py::test_a_warm_run_compiles_nothing)",
    "test_startup.py::test_a_warm_compiled_run_imports_neither_scipy_integrate_nor_sympy":
        "a cold compile then a warm process's imports (~14 s); the default tier keeps the quick commands' imports "
        "(test_startup.py::test_quick_commands_import_no_heavy_package)",
    "test_portable_cache.py::test_a_kernel_compiled_for_the_generic_cpu_is_loaded_by_this_cpu":
        "a kernel compiled for the generic CPU (~4 s); with the other two tests of test_portable_cache.py, "
        "`compile --portable` has no default-tier test",
}

#: The documentation site built and rendered, and the guide's steps on a base install.
SITE = {
    "test_docs_site.py::test_site_builds_without_warnings":
        "the whole site with `sphinx -W` and the gallery run (~65 s); the default tier keeps the docstrings' page "
        "links (test_docs_site.py::test_docstrings_point_to_pages_that_exist), the docs extension's pages "
        "(test_docs_extension.py) and every example run (test_examples.py)",
    "test_docs_site.py::test_every_public_name_has_an_api_page": "reads the built site",
    "test_docs_site.py::test_internal_links_and_images_resolve": "reads the built site",
    "test_docs_site.py::test_the_gallery_shows_every_example_with_its_figures": "reads the built site",
    "test_docs_site.py::test_pages_render_in_headless_chromium": "Chromium over the built site (~23 s)",
    "test_docs_site.py::test_the_browser_check_catches_a_broken_image": "Chromium over the built site",
    "test_docs_site.py::test_example_runs": "reads the gallery's run of each example from the site's build",
    "test_reports.py::test_html_renders_in_headless_chromium":
        "Chromium over a report (~4 s); the default tier keeps the report's HTML checked as text (test_reports.py)",
    "test_examples.py::test_guide_own_system_steps_run_on_a_base_install":
        "the own-system guide's steps as processes on a base install (~10 s); the default tier keeps the user's "
        "own plants through the API (test_user_plants.py, test_user_compiled.py)",
}

#: End-to-end runs that repeat, longer, what a shorter test of the default tier holds.
RUNS = {
    "test_loop.py::test_tune_designs_for_the_sensor_and_writes_a_scenario_run_accepts":
        "tune through a UR5's sensor, its design written and run again (~20-40 s: the ranking of ~1000 candidates' "
        "sampled bounds); the default tier keeps the search's verification over the box "
        "(test_tune_box.py::test_a_design_that_holds_on_the_actual_plant_is_rejected_at_the_corner_that_breaks_it) and the "
        "sampled bounds it ranks by (test_loop.py::test_coverage_says_what_the_theory_covers)",
    "test_tune_box.py::test_tune_of_ur5_payload_sensed_holds_on_every_verified_plant_of_its_payload_range":
        "the UR5's design search for its sensor, each candidate on the payload box's corners and 3 draws (~30-90 s); "
        "the default tier keeps a candidate rejected at the corner that breaks it and named "
        "(test_tune_box.py::test_a_design_that_holds_on_the_actual_plant_is_rejected_at_the_corner_that_breaks_it), "
        "the search's box pass (test_tune_box.py::test_alpha0_is_lowered_to_cover_the_boxs_mtilde_below_one) "
        "and the UR5's tune on a short horizon (test_loop.py::test_tune_designs_for_the_sensor_and_writes_a_scenario_"
        "run_accepts)",
    "test_tune_box.py::test_the_panda_catalog_design_is_not_guaranteed_over_its_payload_range_and_says_why":
        "the 7-joint Panda's nominal run on numpy (posture) and its box's corners (~5-9 s); the default tier keeps the "
        "box pass against the pendulum's closed form (test_tune_box.py::test_a_box_whose_mtilde_reaches_one_is_said_"
        "not_guaranteed_before_any_candidate_runs)",
    "test_posture.py::test_the_panda_circle_keeps_its_joints_in_range_with_the_posture":
        "two 3-s nominal runs of the 7-joint Panda, one on numpy (~5 s); the default tier keeps the posture's motion "
        "against its closed form (test_posture.py::test_the_motion_is_the_closest_to_the_posture_that_meets_the_"
        "requirement)",
    "test_robot_limits.py::test_the_monte_carlo_summary_puts_each_joints_peak_beside_its_limit":
        "a 3-sample UR5 Monte Carlo on the CLI with a store (~9 s); the default tier keeps the summary's effort entry "
        "(test_robot_limits.py::test_the_campaign_summarys_effort_entry_counts_the_samples_over_a_limit)",
    "test_robot_limits.py::test_the_panda_with_locked_fingers_runs_in_mujoco":
        "the 7-joint Panda (fingers locked) run against MuJoCo and robustrack (~4 s); the default tier keeps its model "
        "welded at the held positions, M and forces to 1e-12 (test_mujoco.py::test_mujocos_mass_matrix_and_forces_are_"
        "the_urdf_plants)",
    "test_robot_limits.py::test_a_run_over_a_limit_saturates_says_the_joint_and_the_controller_gives_its_force":
        "a saturated UR5 run and the controller at its 41 states (~2.5 s); the default tier keeps the run's notice and "
        "peaks (test_robot_limits.py::test_the_run_prints_peak_effort_per_joint_against_its_limit) and the clipping "
        "of Controller and C (test_export.py::test_the_c_saturates_at_the_effort_limits_and_holds_past_the_horizon)",
    "test_exact_bounds.py::test_closed_certificate_refuses_the_start_the_old_check_admitted":
        "two closed certificates of a symbolic two-mass plant (~2.6 s, the ball functions compiled in the process); "
        "the default tier keeps the per-coordinate set the `initial` condition calls "
        "(test_exact_bounds.py::test_gss_invariant_set_is_per_coordinate) and a closed certificate's conditions "
        "(test_certify.py::test_closed_certificate_on_duffing_tracking_and_an_honest_failure)",
    "test_exact_bounds.py::test_no_finished_run_ends_not_held_with_assumptions_held_many":
        "60 random one- and two-joint loops (~1 min); the default tier keeps three of them "
        "(test_exact_bounds.py::test_no_finished_run_ends_not_held_with_assumptions_held) and the resonant GD-bar "
        "counterexample",
    "test_bounded_runs.py::test_the_ur5_held_in_full_pose_at_its_wrist_singularity_ends_named":
        "the UR5 run into its wrist singularity (~12 s); the default tier keeps a run stopped by name "
        "(test_bounded_runs.py::test_a_diverging_hold_is_stopped_on_its_time_scale_in_seconds_not_at_the_evaluation_limit"
        "[compiled])",
    "test_mujoco.py::test_run_saves_mujocos_log_and_identify_reads_it":
        "ur5-payload run twice through the CLI, once against MuJoCo (~8 s); the default tier keeps MuJoCo's log "
        "identified in Python (test_mujoco.py::test_the_payload_is_identified_from_mujocos_log_of_q_qd_and_the_held_"
        "torque)",
}

#: Whole reports that repeat, for another scenario or compensator, what a report of the default tier checks: each
#: report costs its six figures (~2.5 s, matplotlib's drawing), whatever its horizon.
REPORTS = {
    "test_reports.py::test_header_cites_the_sources_of_the_compensator_that_ran":
        "two reports, GD and LQR (~8 s); the default tier keeps a report's citations chosen by the law that ran "
        "(test_report_results.py::test_a_users_own_system_reads_verdict_first_and_cites_the_law_not_the_seeds_settings)",
    "test_introduces_itself.py::test_report_ends_with_the_verdict_and_its_numbers":
        "two reports through the CLI (~11 s); the default tier keeps the verdict first in both formats "
        "(test_reports.py::test_the_report_opens_with_its_verdict_and_key_figure_in_both_formats)",
    "test_introduces_itself.py::test_report_verdict_when_nothing_is_promised_or_judged":
        "reports that judge nothing (~6 s); the default tier keeps them "
        "(test_reports.py::test_a_verdict_that_judges_nothing_says_why_first)",
    "test_campaigns_report.py::test_report_runs_its_own_montecarlo":
        "a report with its own Monte Carlo (~6 s); the default tier keeps a report beside a campaign "
        "(test_campaigns_report.py::test_report_with_a_campaign_store, test_certificate_design.py)",
    "test_report_files.py::test_an_interrupted_write_leaves_no_half_file":
        "Ctrl-C inside a whole report's writing (~6 s); the default tier keeps the atomic write's unit tests "
        "(test_bad_input.py::test_atomic_write_keeps_the_old_file_when_the_write_fails, test_run_save.py)",
}

RUNS.update({
    "test_python_kind.py::test_worst_case_reproduce_line_reruns_the_worst_plant":
        "a worst-case search of a python-kind scenario through the CLI (~8 s); the default tier keeps the "
        "reproduce line (test_campaigns.py::test_worst_case_beats_the_monte_carlo_worst_and_run_reproduces_it)",
    "test_singular_tracking.py::test_the_monte_carlos_earlier_form_still_runs_the_same_with_a_notice":
        "a singular Monte Carlo through its earlier call (~5 s); the default tier keeps the earlier form's notice "
        "(test_singular_tracking.py::test_the_earlier_form_still_runs_the_same_with_a_notice) and the singular "
        "Monte Carlo (test_monte_carlo_user_plant_two_masses_box)",
})

RUNS.update({
    "test_forces_compiled.py::test_a_symbolic_plant_with_each_force_runs_compiled_as_on_numpy[friction]":
        "one force kind, compiled against numpy (~1.7 s, a structure of its own); the default tier keeps the sum of "
        "friction, noise and step ([sum]) and the sinusoid ([sinusoid])",
    "test_forces_compiled.py::test_a_symbolic_plant_with_each_force_runs_compiled_as_on_numpy[noise]":
        "as [friction] (~2 s); [sum] holds the noise",
    "test_forces_compiled.py::test_a_symbolic_plant_with_each_force_runs_compiled_as_on_numpy[step]":
        "as [friction] (~2 s); [sum] holds the step",
    "test_interop.py::test_closed_loop_input_output_response_reproduces_simulate_tracking[gd]":
        "python-control's Radau against simulate_tracking for GD (~2 s); the default tier keeps it for GSS ([gss])",
    "test_singular_tracking.py::test_springs_alpha_G_do_not_change_the_run":
        "a whole singular run twice, for α and G (~3 s); the default tier keeps the invariance of the physical "
        "motion (test_singular_tracking.py::test_physical_motion_does_not_depend_on_alpha_and_G) and of the "
        "constrained compliance (test_constrained_compliance_on_the_auxiliary_system_is_independent_of_alpha_G_sympy)",
})

SLOW = {**FAULTS, **COMPILES, **SITE, **RUNS, **REPORTS}

#: The default tier's heaviest files, heaviest first (worker-seconds of a run on two workers, stop 47): the run
#: hands whole files to its two workers (``--dist loadfile``), and handing out the longest first keeps the two busy
#: to the end (longest-processing-time first). The order only balances the workers; a stale one costs seconds.
HEAVY_FIRST = ("test_reports.py", "test_singular_tracking.py", "test_bad_input.py", "test_report_results.py",
               "test_export.py", "test_loop.py", "test_certify.py", "test_examples.py", "test_model_scenarios.py",
               "test_campaigns.py", "test_user_compiled.py", "test_forces_compiled.py", "test_kernels.py",
               "test_trust.py", "test_judging_window.py", "test_campaigns_dask.py", "test_python_kind.py",
               "test_actuators.py", "test_model_cache.py", "test_certificate_design.py", "test_task_space_report.py",
               "test_tracking.py", "test_example_plants.py", "test_compare.py", "test_layering.py", "test_power.py",
               "test_urdf_kind.py", "test_disturbances.py", "test_scenarios.py", "test_user_plants.py")
