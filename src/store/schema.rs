// One diesel schema for both backends: only types SQLite and Postgres share.
// Written from migrations/*/2026-11-30-000001_initial/up.sql; keep in step with them.

diesel::table! {
    emotions (id) {
        id -> BigInt,
        name -> Text,
        position -> Integer,
    }
}

diesel::table! {
    situation_sets (id) {
        id -> BigInt,
        name -> Text,
        description -> Text,
        source -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    factors (id) {
        id -> BigInt,
        set_id -> BigInt,
        emotion_id -> BigInt,
        factor_index -> Integer,
        name -> Text,
    }
}

diesel::table! {
    situations (id) {
        id -> BigInt,
        set_id -> BigInt,
        factor_id -> BigInt,
        key -> Text,
        scenario_index -> Integer,
        position -> Integer,
        text -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        variant_of -> Nullable<Text>,
        valence -> Text,
    }
}

diesel::table! {
    /// A situation's text in another language than its own (#20).
    situation_texts (situation_id, language) {
        situation_id -> BigInt,
        language -> Text,
        text -> Text,
    }
}

diesel::table! {
    instruments (id) {
        id -> BigInt,
        key -> Text,
        min_value -> Integer,
        max_value -> Integer,
        labels -> Text,
        scoring -> Text,
        multiplier -> Integer,
        reverse_constant -> Integer,
        paper_raw_sum -> Bool,
        prompt -> Text,
        system_prompt -> Text,
        builtin -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    instrument_items (id) {
        id -> BigInt,
        instrument_id -> BigInt,
        number -> Integer,
        text -> Text,
        reverse -> Bool,
        options -> Nullable<Text>,
    }
}

diesel::table! {
    /// An instrument's item texts and labels in another language than its own (#20), JSON.
    instrument_texts (instrument_id, language) {
        instrument_id -> BigInt,
        language -> Text,
        items -> Text,
        labels -> Text,
    }
}

diesel::table! {
    instrument_categories (id) {
        id -> BigInt,
        instrument_id -> BigInt,
        position -> Integer,
        name -> Text,
        items -> Text,
    }
}

diesel::table! {
    users (id) {
        id -> BigInt,
        email -> Text,
        password_hash -> Text,
        role -> Text,
        disabled -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        password_changed_at -> Timestamp,
    }
}

diesel::table! {
    sessions (id) {
        id -> BigInt,
        token_hash -> Text,
        user_id -> BigInt,
        csrf_token -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        last_seen_at -> Timestamp,
        client_ip -> Nullable<Text>,
        user_agent -> Nullable<Text>,
    }
}

diesel::table! {
    login_attempts (id) {
        id -> BigInt,
        email -> Text,
        client_ip -> Text,
        succeeded -> Bool,
        at -> Timestamp,
    }
}

diesel::table! {
    /// Secrets every process of one installation shares (the CSRF token key), made once.
    server_secrets (name) {
        name -> Text,
        secret -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    studies (id) {
        id -> BigInt,
        slug -> Text,
        title -> Text,
        status -> Text,
        instrument_id -> BigInt,
        situation_set_id -> Nullable<BigInt>,
        consent_text -> Text,
        debrief_text -> Text,
        target_per_situation -> Integer,
        item_order -> Text,
        attention_check -> Text,
        demographics -> Text,
        pid_param -> Text,
        study_id_param -> Text,
        session_id_param -> Text,
        code_completed -> Nullable<Text>,
        code_no_consent -> Nullable<Text>,
        code_failed_check -> Nullable<Text>,
        code_screened_out -> Nullable<Text>,
        min_situation_seconds -> Integer,
        reservation_minutes -> Integer,
        seed -> BigInt,
        retention_until -> Nullable<Timestamp>,
        created_by -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        opened_at -> Nullable<Timestamp>,
        closed_at -> Nullable<Timestamp>,
        /// The study's languages, a JSON list of tags, the first its default (#20).
        languages -> Text,
        /// The valences of the situations participants are assigned, a JSON list; empty for
        /// all (#18).
        valences -> Text,
        /// The free-text field of the situation page (#18), JSON (`domain::study::FreeTextField`);
        /// `null` for none.
        free_text -> Text,
        /// The consent and debrief in the study's other languages (#20), a JSON object from
        /// language tag to `domain::study::StudyTexts`; `{}` for none.
        translations -> Text,
    }
}

diesel::table! {
    participants (id) {
        id -> BigInt,
        study_id -> BigInt,
        public_id -> Text,
        prolific_pid -> Nullable<Text>,
        prolific_study_id -> Nullable<Text>,
        prolific_session_id -> Nullable<Text>,
        status -> Text,
        page -> Text,
        situation_id -> Nullable<BigInt>,
        assignment -> Nullable<Text>,
        reserved_until -> Nullable<Timestamp>,
        order_default -> Nullable<Text>,
        order_evoked -> Nullable<Text>,
        demographics -> Nullable<Text>,
        flag_straightline -> Bool,
        flag_fast -> Bool,
        flag_failed_check -> Bool,
        imported -> Bool,
        source_ref -> Nullable<Text>,
        split -> Nullable<Text>,
        user_agent -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        completed_at -> Nullable<Timestamp>,
        export_id -> Text,
        resume_id -> Nullable<Text>,
        pilot -> Bool,
        /// The situation page's honeypot was filled (`domain::evidence`, #15).
        flag_honeypot -> Bool,
        /// The language the participant took the study in (#20); NULL before languages.
        language -> Nullable<Text>,
    }
}

diesel::table! {
    responses (id) {
        id -> BigInt,
        participant_id -> BigInt,
        phase -> Text,
        item_number -> Integer,
        value -> Integer,
        display_position -> Integer,
        created_at -> Timestamp,
    }
}

diesel::table! {
    attention_checks (id) {
        id -> BigInt,
        participant_id -> BigInt,
        check_key -> Text,
        answer -> Text,
        passed -> Bool,
        created_at -> Timestamp,
    }
}

diesel::table! {
    page_events (id) {
        id -> BigInt,
        participant_id -> BigInt,
        page -> Text,
        event -> Text,
        at -> Timestamp,
    }
}

diesel::table! {
    model_providers (id) {
        id -> BigInt,
        name -> Text,
        kind -> Text,
        base_url -> Text,
        api_key_env -> Nullable<Text>,
        concurrency -> Integer,
        requests_per_minute -> Nullable<Integer>,
        tokens_per_minute -> Nullable<Integer>,
        price_input_micros -> Nullable<BigInt>,
        price_output_micros -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    model_runs (id) {
        id -> BigInt,
        study_id -> Nullable<BigInt>,
        provider -> Text,
        model -> Text,
        instrument_id -> BigInt,
        situation_set_id -> Nullable<BigInt>,
        template -> Text,
        params -> Text,
        selection -> Text,
        repeats -> Integer,
        default_repeats -> Integer,
        seed -> BigInt,
        status -> Text,
        source -> Text,
        error -> Nullable<Text>,
        created_by -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        started_at -> Nullable<Timestamp>,
        finished_at -> Nullable<Timestamp>,
        /// The language tag the run asks in, one of its study's (#20); NULL: the study's
        /// default.
        language -> Nullable<Text>,
    }
}

diesel::table! {
    model_trials (id) {
        id -> BigInt,
        run_id -> BigInt,
        measure -> Text,
        situation_id -> Nullable<BigInt>,
        situation_key -> Text,
        repeat_index -> Integer,
        status -> Text,
        attempts -> Integer,
        lease_owner -> Nullable<Text>,
        lease_expires_at -> Nullable<Timestamp>,
        item_order -> Text,
        request -> Nullable<Text>,
        raw_reply -> Nullable<Text>,
        scores -> Nullable<Text>,
        error_class -> Nullable<Text>,
        error -> Nullable<Text>,
        latency_ms -> Nullable<BigInt>,
        input_tokens -> Nullable<BigInt>,
        output_tokens -> Nullable<BigInt>,
        cost_micros -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        started_at -> Nullable<Timestamp>,
        finished_at -> Nullable<Timestamp>,
        finish_reason -> Nullable<Text>,
        model_version -> Nullable<Text>,
        method -> Nullable<Text>,
        distributions -> Nullable<Text>,
        cached -> Bool,
        persona -> Nullable<Text>,
        before_order -> Nullable<Text>,
        before_scores -> Nullable<Text>,
    }
}

diesel::table! {
    /// Successful replies by the hash of what was asked (`store::cache`, #17).
    response_cache (key) {
        key -> Text,
        provider_kind -> Text,
        base_url -> Text,
        model -> Text,
        request -> Text,
        repeat_index -> Integer,
        http_status -> Integer,
        reply -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    trial_attempts (id) {
        id -> BigInt,
        trial_id -> BigInt,
        attempt -> Integer,
        request -> Text,
        raw_reply -> Nullable<Text>,
        http_status -> Nullable<Integer>,
        error_class -> Nullable<Text>,
        error -> Nullable<Text>,
        latency_ms -> Nullable<BigInt>,
        input_tokens -> Nullable<BigInt>,
        output_tokens -> Nullable<BigInt>,
        started_at -> Timestamp,
        finished_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    audit_log (id) {
        id -> BigInt,
        at -> Timestamp,
        user_id -> Nullable<BigInt>,
        actor -> Text,
        action -> Text,
        target -> Nullable<Text>,
        detail -> Nullable<Text>,
        client_ip -> Nullable<Text>,
    }
}

diesel::joinable!(factors -> situation_sets (set_id));
diesel::joinable!(factors -> emotions (emotion_id));
diesel::joinable!(situations -> situation_sets (set_id));
diesel::joinable!(situations -> factors (factor_id));
diesel::joinable!(situation_texts -> situations (situation_id));
diesel::joinable!(instrument_items -> instruments (instrument_id));
diesel::joinable!(instrument_categories -> instruments (instrument_id));
diesel::joinable!(instrument_texts -> instruments (instrument_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(studies -> instruments (instrument_id));
diesel::joinable!(studies -> situation_sets (situation_set_id));
diesel::joinable!(studies -> users (created_by));
diesel::joinable!(participants -> studies (study_id));
diesel::joinable!(participants -> situations (situation_id));
diesel::joinable!(responses -> participants (participant_id));
diesel::joinable!(attention_checks -> participants (participant_id));
diesel::joinable!(page_events -> participants (participant_id));
diesel::joinable!(model_runs -> studies (study_id));
diesel::joinable!(model_runs -> instruments (instrument_id));
diesel::joinable!(model_runs -> situation_sets (situation_set_id));
diesel::joinable!(model_runs -> users (created_by));
diesel::joinable!(model_trials -> model_runs (run_id));
diesel::joinable!(model_trials -> situations (situation_id));
diesel::joinable!(trial_attempts -> model_trials (trial_id));
diesel::joinable!(audit_log -> users (user_id));

diesel::table! {
    /// Completed participants per situation of a study, kept by triggers on `participants`.
    situation_counts (study_id, situation_id) {
        study_id -> BigInt,
        situation_id -> BigInt,
        completed -> BigInt,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    emotions,
    situation_texts,
    situation_sets,
    factors,
    situations,
    instruments,
    instrument_items,
    instrument_categories,
    instrument_texts,
    users,
    sessions,
    login_attempts,
    server_secrets,
    studies,
    participants,
    responses,
    attention_checks,
    page_events,
    model_providers,
    model_runs,
    model_trials,
    trial_attempts,
    audit_log,
    situation_counts,
);

diesel::table! {
    /// Provider batches of a run (`store::batches`, #17).
    run_batches (id) {
        id -> BigInt,
        run_id -> BigInt,
        provider_batch_id -> Text,
        input_file_id -> Nullable<Text>,
        status -> Text,
        trials -> Text,
        error -> Nullable<Text>,
        lease_owner -> Nullable<Text>,
        lease_expires_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        finished_at -> Nullable<Timestamp>,
    }
}

diesel::joinable!(run_batches -> model_runs (run_id));
diesel::allow_tables_to_appear_in_same_query!(run_batches, model_runs);

diesel::table! {
    /// Invitations to create an account (`store::invites`); only the token's hash is kept.
    invites (id) {
        id -> BigInt,
        token_hash -> Text,
        email -> Text,
        role -> Text,
        created_by -> Nullable<BigInt>,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        used_at -> Nullable<Timestamp>,
    }
}

diesel::joinable!(invites -> users (created_by));
diesel::allow_tables_to_appear_in_same_query!(invites, users);

diesel::table! {
    /// A study's Prolific settings and draft (`store::prolific`, #15).
    prolific_studies (study_id) {
        study_id -> BigInt,
        prolific_study_id -> Nullable<Text>,
        description -> Text,
        reward_cents -> Integer,
        places -> Nullable<Integer>,
        auto_approve -> Bool,
        screen_out_reward_cents -> Nullable<Integer>,
        estimated_minutes -> Nullable<Integer>,
        drafted_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(prolific_studies -> studies (study_id));
diesel::allow_tables_to_appear_in_same_query!(prolific_studies, studies);

diesel::table! {
    /// Prolific webhook deliveries by X-Event-ID (`store::prolific`, #15).
    prolific_webhook_events (id) {
        id -> BigInt,
        event_id -> Text,
        event_type -> Text,
        resource_id -> Nullable<Text>,
        status -> Nullable<Text>,
        participant_id -> Nullable<BigInt>,
        outcome -> Text,
        received_at -> Timestamp,
    }
}

diesel::table! {
    /// Identity at the door, per study (`store::doors`, #15 point 2).
    study_doors (study_id) {
        study_id -> BigInt,
        require_token -> Bool,
        token_audience -> Nullable<Text>,
        token_workspace_id -> Nullable<Text>,
        prolific_only -> Bool,
        address_limit -> Nullable<Integer>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    /// The earlier studies whose Prolific ids a study turns away (`store::doors`).
    study_door_exclusions (study_id, excluded_study_id) {
        study_id -> BigInt,
        excluded_study_id -> BigInt,
    }
}

// The settings page lists the excluded studies by slug; the door looks ids up in them.
diesel::allow_tables_to_appear_in_same_query!(study_door_exclusions, studies);
diesel::allow_tables_to_appear_in_same_query!(study_door_exclusions, participants);

diesel::table! {
    /// Which evidence signals exclude a participant from the analysis, per study
    /// (`store::evidence`, #15 point 4); `signals` is a JSON list of signal names.
    study_exclusions (study_id) {
        study_id -> BigInt,
        signals -> Text,
        updated_at -> Timestamp,
        changed_after_opening -> Bool,
    }
}

diesel::joinable!(study_exclusions -> studies (study_id));
diesel::allow_tables_to_appear_in_same_query!(study_exclusions, studies);

diesel::table! {
    /// Scores of free-text trials, one per trial and scorer, worked as a leased queue
    /// (`store::text_scores`, #18); `score_ppm` is the score in [0, 1] times 1,000,000.
    text_scores (id) {
        id -> BigInt,
        trial_id -> BigInt,
        scorer -> Text,
        status -> Text,
        attempts -> Integer,
        lease_owner -> Nullable<Text>,
        lease_expires_at -> Nullable<Timestamp>,
        scorer_version -> Nullable<Text>,
        score_ppm -> Nullable<BigInt>,
        reason -> Nullable<Text>,
        error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        scored_at -> Nullable<Timestamp>,
    }
}

diesel::joinable!(text_scores -> model_trials (trial_id));
diesel::allow_tables_to_appear_in_same_query!(text_scores, model_trials);
diesel::allow_tables_to_appear_in_same_query!(text_scores, model_runs);

diesel::table! {
    /// Human participants' free-text answers (#18), at most one per participant, with the task
    /// and the prompt as shown (`store::participants`).
    participant_texts (id) {
        id -> BigInt,
        participant_id -> BigInt,
        task_key -> Text,
        prompt -> Text,
        body -> Text,
        created_at -> Timestamp,
    }
}

diesel::joinable!(participant_texts -> participants (participant_id));
diesel::allow_tables_to_appear_in_same_query!(participant_texts, participants);
