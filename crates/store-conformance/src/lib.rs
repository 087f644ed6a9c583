//! # kairos-store-conformance
//!
//! One behaviour suite for every [`Store`](kairos_store::Store) (River's driver suite, Oban's
//! engine tests). A store crate runs it with
//!
//! ```ignore
//! async fn factory() -> Option<(std::sync::Arc<dyn kairos_store::Store>, Box<dyn std::any::Any + Send>)> { … }
//! kairos_store_conformance::store_conformance!(factory);
//! ```
//!
//! which expands to one `#[tokio::test]` per behaviour, named after it, so a failure names the
//! behaviour and the store. The guard (second tuple element) keeps the test's database alive
//! (a temp dir, a PostgreSQL schema) until the test ends. A factory returns `None` to skip
//! (a database server that is not there when it is not required); it says so loudly itself. A store that cannot have a behaviour
//! skips it by name with its reason, in its own test file.
#![deny(missing_docs)]

pub mod artifacts;
pub mod audience;
pub mod audience_targets;
pub mod bulk;
pub mod channels;
pub mod claim_order;
pub mod concurrency;
pub mod deliverability;
pub mod deliveries;
pub mod endpoint_health;
pub mod erasure;
pub mod fixtures;
pub mod host_limits;
pub mod inbound;
pub mod jobs;
pub mod occurrence_status;
pub mod raw;
pub mod retention;
pub mod retention_tables;
pub mod schedule_gaps;
pub mod schedule_overlap;
pub mod schedules;
pub mod sealing;
pub mod search;
pub mod slo;
pub mod slot_reclaim;
pub mod timeline;

/// Expand the behaviours that need a back door into the database ([`raw::RawSql`]) against a
/// factory returning `Option<(Arc<dyn Store>, guard, RawSql)>`.
#[macro_export]
macro_rules! store_conformance_raw {
    ($factory:path) => {
        $crate::store_conformance_raw!(@raw $factory;
            job_claim_isolates_an_undecodable_row,
            migrations_adopt_the_former_runners_record,
            migrations_refuse_a_file_changed_after_it_was_applied,
            plain_success_is_held_by_the_job_row_and_listed_as_its_attempt,
            audience_keys_of_an_older_version_are_rewritten_by_migration_0024,
        );
    };
    (@raw $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard, raw)) = $factory().await else { return };
                $crate::raw::$name(store, raw).await;
            }
        )*
    };
}

/// Expand the whole suite against a store factory. See the crate docs.
#[macro_export]
macro_rules! store_conformance {
    ($factory:path) => {
        $crate::store_conformance!(@jobs $factory;
            job_insert_and_get_roundtrips_fields,
            job_retry_kind_default_reads_back_as_none,
            job_idempotency_key_returns_existing_job,
            job_insert_many_skips_existing_dedupe_keys,
            job_insert_batch_answers_each_job_in_order,
            job_claim_drains_backlog_oldest_first_in_batches,
            job_claim_never_takes_a_job_before_its_run_at,
            job_claim_is_exclusive_under_concurrency,
            job_complete_success_records_attempt,
            job_complete_mixed_batch_applies_each_completion,
            job_complete_retry_then_dead,
            job_complete_refund_does_not_spend_an_attempt,
            job_complete_with_stale_lease_token_is_rejected,
            job_lease_renew_extends_only_held_leases,
            job_rescue_returns_expired_leases,
            job_rescue_returns_a_restarted_nodes_jobs_at_once,
            job_rescue_dead_letters_spent_jobs,
            job_dead_is_never_claimed_and_replay_revives_it,
            job_cancel_stops_available_job,
            job_retry_refuses_succeeded_job,
            job_list_filters_by_state_kind_and_schedule,
            job_next_run_at_and_counts,
        );
        $crate::store_conformance!(@claim_order $factory;
            claim_finds_a_job_inserted_below_the_jobs_claimed,
            claim_finds_a_retry_due_below_the_jobs_claimed,
            claim_finds_an_admin_retry_below_the_jobs_claimed,
            claim_finds_a_rescued_job_below_the_jobs_claimed,
            next_run_at_reports_a_job_inserted_below_the_jobs_claimed,
            rescue_finds_a_lease_set_below_the_last_rescue,
        );
        $crate::store_conformance!(@concurrency $factory;
            concurrency_key_roundtrips,
            concurrency_claim_takes_at_most_max_per_key_and_other_keys_run,
            concurrency_slot_frees_on_completion,
            concurrency_slot_frees_on_rescue_and_cancel,
            concurrency_claims_racing_never_exceed_max,
            concurrency_failed_key_takes_no_slot,
            concurrency_waits_are_counted_by_reason,
            job_get_reads_why_a_due_job_waits_issue_34,
            concurrency_claim_skips_a_key_at_its_max_issue_34,
            concurrency_waiting_counts_each_job_of_a_key_at_its_max,
            concurrency_skipped_job_below_the_claimed_runs_when_its_key_frees,
            endpoint_limits_set_list_and_remove,
            endpoint_rate_limit_puts_deliveries_back_until_their_token,
            endpoint_max_in_flight_holds_until_a_delivery_finishes,
        );
        $crate::store_conformance!(@host_limits $factory;
            host_limits_set_list_replace_and_remove,
            host_rate_limit_puts_calls_back_and_a_repeated_save_keeps_the_bucket,
            host_max_in_flight_holds_until_a_call_finishes,
        );
        $crate::store_conformance!(@slot_reclaim $factory;
            concurrency_slot_of_an_expired_lease_is_taken_again,
            concurrency_slots_no_job_holds_are_pruned_and_held_ones_stay,
        );
        $crate::store_conformance!(@bulk $factory;
            job_bulk_cancel_filter_takes_unfinished_jobs_in_bounded_batches,
            job_bulk_filters_each_narrow_and_combine,
            job_bulk_cancel_by_ids_ignores_unknown_and_finished,
            job_bulk_retry_requeues_dead_and_cancelled_only,
        );
        $crate::store_conformance!(@erasure $factory;
            recipient_erase_keeps_only_a_keyed_hash_of_the_address,
            recipient_erase_creates_the_key_once,
            topic_and_subscription_delete,
        );
        $crate::store_conformance!(@retention $factory;
            job_prune_deletes_old_finished_jobs_and_attempts_in_bounded_batches,
            job_prune_skips_replayed_jobs,
            job_prune_deletes_exactly_a_limit_of_hundreds,
            pruned_dedupe_key_is_never_created_again,
            job_insert_batch_with_a_pruned_key_inserts_nothing,
            dedupe_tombstones_are_pruned_after_their_retention,
            exposures_are_pruned_by_age,
            finished_expansions_are_pruned_and_unfinished_ones_kept,
            suppression_log_is_pruned_but_keeps_why_an_address_is_suppressed,
            resolved_slo_alerts_are_pruned_and_firing_ones_kept,
            http_target_upsert_reuses_by_fingerprint_and_roundtrips,
        );
        $crate::store_conformance!(@schedules $factory;
            schedule_create_get_list_update_delete,
            schedule_pause_and_resume,
            schedule_due_claims_oldest_first_and_locks,
            schedule_release_frees_a_restarted_nodes_claims_at_once,
            schedule_fire_creates_jobs_and_advances_once,
            schedule_fire_dedupe_key_prevents_duplicate_jobs,
            schedule_fire_finishes_one_shot,
            schedule_next_fire_at_ignores_paused,
            schedule_fire_records_a_finished_one_shots_gap,
            schedule_gap_recovers_at_the_next_on_time_firing_and_goes_with_its_schedule,
            schedule_misfire_threshold_and_window_roundtrip,
            occurrence_open_lists_only_unfinished_jobs_of_that_occurrence,
            schedule_buffer_holds_one_firing_and_runs_it_once,
            endpoint_upsert_reuses_and_disable_records,
            endpoint_list_enable_and_last_failure,
        );
        $crate::store_conformance!(@endpoint_health $factory;
            endpoint_health_flush_folds_settled_attempts_once,
            endpoint_health_flush_counts_recipient_webhooks_for_their_endpoint,
            endpoint_health_flush_is_bounded,
            endpoint_streak_disable_needs_count_and_time_and_enable_resets,
            endpoint_secret_rotate_keeps_the_previous_and_moves_the_lookup,
            endpoint_health_hours_are_pruned_by_age,
        );
        $crate::store_conformance!(@channels $factory;
            schedule_channels_roundtrip_and_replace,
            job_channel_roundtrips_and_occurrences_count_per_channel,
            recipient_endpoint_roundtrips,
        );
        $crate::store_conformance!(@artifacts $factory;
            artifact_put_inserts_once_and_keeps_the_first,
            artifact_list_filters_and_prune_is_bounded,
            catch_up_set_due_fire_once_and_cascade,
        );
        $crate::store_conformance!(@audience $factory;
            recipient_upsert_get_list_and_bulk,
            topic_put_get_replaces_variants,
            subscription_put_list_active_only_keyset,
            suppression_add_is_idempotent_and_normalized,
            expansion_cursor_resumes_and_fences,
            exposure_recorded_only_for_succeeded_email_jobs,
            exposure_follows_the_completion_not_the_kind,
            occurrence_list_counts_by_period_channel_state,
        );
        $crate::store_conformance!(@occurrence_status $factory;
            occurrence_list_filters_on_the_derived_status_before_the_limit_i35_5,
        );
        $crate::store_conformance!(@audience_targets $factory;
            subscription_targets_roundtrip_replace_and_erase,
        );
        $crate::store_conformance!(@inbound $factory;
            inbound_event_record_is_idempotent_by_event_id,
            inbound_event_prune_is_bounded_and_keeps_suppressions,
            inbound_event_matches_job_by_provider_message_id,
            suppression_apply_cascades_to_every_subscription_of_the_address,
            suppression_list_pages_and_remove_is_once,
            subscription_disable_is_idempotent,
            setting_put_get_and_clear,
            setting_create_keeps_the_first_value,
            admin_session_create_get_delete_and_prune,
            api_token_create_get_list_revoke_and_touch,
        );
        $crate::store_conformance!(@deliverability $factory;
            topic_count_range_counts_mails_per_topic_with_their_bounces_and_complaints,
            quarter_count_sum_adds_the_counts_of_a_range_of_quarters_per_key,
            quarter_count_record_counts_a_quarter_once_and_lists_what_was_counted,
            inbound_events_add_each_mails_first_bounce_and_complaint_to_its_quarter,
            concurrent_bounces_of_one_mail_count_it_once,
            exposure_outcome_count_counts_variants_with_their_outcomes,
            inbound_event_count_groups_one_action_by_source_and_type,
        );
        $crate::store_conformance!(@deliveries $factory;
            delivery_list_groups_channels_and_filters_on_several_state_axes_s3_14,
            job_list_and_search_filter_by_channel,
        );
        $crate::store_conformance!(@search $factory;
            job_search_combines_filters_and_pages_by_keyset,
            job_search_finds_payload_text_and_filters_on_endpoint,
            job_search_on_an_endpoint_finds_its_recipients_webhook_jobs,
        );
        $crate::store_conformance!(@slo $factory;
            job_count_by_state_kind_and_backlog,
            job_count_group_splits_the_queue_from_what_is_retained,
            job_count_finished_counts_final_states_in_window,
            quarter_count_record_counts_the_finished_jobs_per_kind_and_state,
            a_retried_job_leaves_the_counts_of_its_quarter,
            concurrent_retries_of_one_job_take_it_out_of_its_quarter_once,
            job_finished_series_counts_succeeded_and_dead_per_bucket,
            job_dead_scheduled_lists_latest_death_per_schedule,
            job_count_decided_groups_by_schedule_or_topic_and_reason,
            schedule_fire_times_lists_distinct_firings,
            slo_alert_put_replaces_by_key,
            slo_alert_ack_recovers_an_active_alert_once_s3_17,
            monitor_pass_record_keeps_the_latest_pass_s3_17,
            migration_pending_is_empty_after_migrate,
        );
        $crate::store_conformance!(@timeline $factory;
            queue_sample_record_measures_depth_running_and_lateness_once_per_minute,
            queue_sample_counts_the_jobs_finished_in_its_minute,
            node_heartbeat_upserts_one_leader_and_lists_running_jobs,
        );
    };
    (@jobs $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::jobs::$name(store).await;
            }
        )*
    };
    (@artifacts $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::artifacts::$name(store).await;
            }
        )*
    };
    (@audience $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::audience::$name(store).await;
            }
        )*
    };
    (@audience_targets $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::audience_targets::$name(store).await;
            }
        )*
    };
    (@inbound $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::inbound::$name(store).await;
            }
        )*
    };
    (@timeline $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::timeline::$name(store).await;
            }
        )*
    };
    (@slo $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::slo::$name(store).await;
            }
        )*
    };
    (@deliverability $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::deliverability::$name(store).await;
            }
        )*
    };
    (@deliveries $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::deliveries::$name(store).await;
            }
        )*
    };
    (@search $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::search::$name(store).await;
            }
        )*
    };
    (@claim_order $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::claim_order::$name(store).await;
            }
        )*
    };
    (@concurrency $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::concurrency::$name(store).await;
            }
        )*
    };
    (@host_limits $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::host_limits::$name(store).await;
            }
        )*
    };
    (@slot_reclaim $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::slot_reclaim::$name(store).await;
            }
        )*
    };
    (@bulk $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::bulk::$name(store).await;
            }
        )*
    };
    (@erasure $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::erasure::$name(store).await;
            }
        )*
    };
    (@retention $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::retention::$name(store).await;
            }
        )*
    };
    (@endpoint_health $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::endpoint_health::$name(store).await;
            }
        )*
    };
    (@occurrence_status $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::occurrence_status::$name(store).await;
            }
        )*
    };
    (@channels $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::channels::$name(store).await;
            }
        )*
    };
    (@schedules $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $factory().await else { return };
                $crate::schedules::$name(store).await;
            }
        )*
    };
}
