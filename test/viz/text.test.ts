/**
 * `--format dot` and `--format mermaid`, pinned verbatim for the shipped machine and the
 * editorial machine: initial and terminal marks, counts, descriptions, tags, `event [guard]`
 * labels, one dashed self-loop per state for its repeats, and escaping.
 */
import { describe, expect, it } from 'vitest';
import { buildGraph, renderDot, renderMermaid, type VizGraph } from '../../engine/viz/index.js';
import { shippedPipeline } from '../helpers.js';
import { EDITORIAL } from './fixtures.js';

const shipped = async () => buildGraph((await shippedPipeline()).lifecycle, { pending: 3, confirmed: 1 });
const editorial = async () => buildGraph((await shippedPipeline(EDITORIAL)).lifecycle, { review: 2 });

describe('dot', () => {
  it('renders the shipped machine', async () => {
    expect(renderDot(await shipped())).toMatchInlineSnapshot(`
      "digraph "lesson" {
        label="A lesson moves from the transform to a person's review, then to the jury.";
        labelloc=t;
        rankdir=TB;
        graph [fontname="Helvetica"];
        node [shape=box, style=rounded, fontname="Helvetica"];
        edge [fontname="Helvetica", fontsize=10];
        "__initial" [shape=point, width=0.15, label=""];
        "pending" [label="pending (3)\\ntags: review", tooltip="Written by the transform; nobody has looked at it yet."];
        "confirmed" [label="confirmed (1)\\ntags: judge", tooltip="Confirmed with a visibility; waiting for the jury."];
        "passed" [label="passed (0)", tooltip="A person declined to share it. The file stays so the artifact is never proposed again."];
        "approved" [label="approved (0)\\ntags: promote, pool", tooltip="Approved by the jury; promote writes its pool entry, and the pool counts how its use went."];
        "rejected" [label="rejected (0)\\ntags: terminal, promote", peripheries=2, tooltip="Rejected by the jury; promote records it in declined.jsonl."];
        "archived" [label="archived (0)\\ntags: pool", tooltip="Taken out of use; its pool entry is in archived/, byte for byte, and restore puts it back."];
        "__initial" -> "pending";
        "pending" -> "confirmed" [label="confirm [jury_checks_independence]", tooltip="a private proposal runs no jury, so it cannot be version_independent (confirm at org or public)"];
        "pending" -> "passed" [label="pass"];
        "confirmed" -> "pending" [label="unconfirm"];
        "confirmed" -> "approved" [label="approve"];
        "confirmed" -> "rejected" [label="reject"];
        "passed" -> "pending" [label="unpass"];
        "approved" -> "approved" [label="record_outcome [known_result]", tooltip="the result must be hit or miss"];
        "approved" -> "approved" [label="undo_outcome [known_result & hit_to_undo & miss_to_undo]", tooltip="the result must be hit or miss; there is no hit to take back (hit_count is 0); there is no miss to take back (miss_count is 0)"];
        "approved" -> "archived" [label="archive"];
        "archived" -> "approved" [label="restore"];
        "pending" -> "pending" [label="defer, unconfirm, unpass (no change)", style=dashed];
        "confirmed" -> "confirmed" [label="confirm (no change)", style=dashed];
        "passed" -> "passed" [label="pass (no change)", style=dashed];
      }
      "
    `);
  });

  it('renders the editorial machine', async () => {
    expect(renderDot(await editorial())).toMatchInlineSnapshot(`
      "digraph "article" {
        label="An article from draft to publication: \\"breaking\\" news skips the schedule.";
        labelloc=t;
        rankdir=TB;
        graph [fontname="Helvetica"];
        node [shape=box, style=rounded, fontname="Helvetica"];
        edge [fontname="Helvetica", fontsize=10];
        "__initial" [shape=point, width=0.15, label=""];
        "draft" [label="draft (0)\\ntags: writer", tooltip="A writer is working on it."];
        "review" [label="review (2)\\ntags: editor, desk", tooltip="An editor reads it."];
        "scheduled" [label="scheduled (0)", tooltip="Waiting for its slot."];
        "published" [label="published (0)\\ntags: done", peripheries=2, tooltip="Out in the world."];
        "spiked" [label="spiked (0)", peripheries=2, tooltip="Dropped by an editor."];
        "withdrawn" [label="withdrawn (0)", peripheries=2];
        "__initial" -> "draft";
        "draft" -> "review" [label="submit [has_body]", tooltip="the article has no body yet"];
        "draft" -> "withdrawn" [label="withdraw"];
        "review" -> "published" [label="accept [breaking]", tooltip="only breaking news skips the schedule"];
        "review" -> "scheduled" [label="accept [has_slot & not_embargoed]", tooltip="an accepted article needs a slot (--slot); the article is under embargo"];
        "review" -> "draft" [label="request_changes"];
        "review" -> "spiked" [label="spike"];
        "scheduled" -> "published" [label="publish"];
        "scheduled" -> "review" [label="reopen"];
        "scheduled" -> "scheduled" [label="reschedule [has_slot]", tooltip="an accepted article needs a slot (--slot)"];
        "review" -> "review" [label="submit (no change)", style=dashed];
        "published" -> "published" [label="publish (no change)", style=dashed];
      }
      "
    `);
  });
});

describe('mermaid', () => {
  it('renders the shipped machine, with ; written as an entity code', async () => {
    expect(renderMermaid(await shipped())).toMatchInlineSnapshot(`
      "stateDiagram-v2
        %% lesson: A lesson moves from the transform to a person's review, then to the jury.
        state "pending (3)" as pending
        pending : Written by the transform#59; nobody has looked at it yet.
        pending : tags: review
        state "confirmed (1)" as confirmed
        confirmed : Confirmed with a visibility#59; waiting for the jury.
        confirmed : tags: judge
        state "passed (0)" as passed
        passed : A person declined to share it. The file stays so the artifact is never proposed again.
        state "approved (0)" as approved
        approved : Approved by the jury#59; promote writes its pool entry, and the pool counts how its use went.
        approved : tags: promote, pool
        state "rejected (0)" as rejected
        rejected : Rejected by the jury#59; promote records it in declined.jsonl.
        rejected : tags: terminal, promote
        state "archived (0)" as archived
        archived : Taken out of use#59; its pool entry is in archived/, byte for byte, and restore puts it back.
        archived : tags: pool
        [*] --> pending
        pending --> confirmed : confirm [jury_checks_independence]
        pending --> passed : pass
        confirmed --> pending : unconfirm
        confirmed --> approved : approve
        confirmed --> rejected : reject
        passed --> pending : unpass
        approved --> approved : record_outcome [known_result]
        approved --> approved : undo_outcome [known_result & hit_to_undo & miss_to_undo]
        approved --> archived : archive
        archived --> approved : restore
        pending --> pending : defer, unconfirm, unpass (no change)
        confirmed --> confirmed : confirm (no change)
        passed --> passed : pass (no change)
        rejected --> [*]
        classDef terminal stroke-width:3px
        class rejected terminal
      "
    `);
  });

  it('renders the editorial machine', async () => {
    expect(renderMermaid(await editorial())).toMatchInlineSnapshot(`
      "stateDiagram-v2
        %% article: An article from draft to publication: "breaking" news skips the schedule.
        state "draft (0)" as draft
        draft : A writer is working on it.
        draft : tags: writer
        state "review (2)" as review
        review : An editor reads it.
        review : tags: editor, desk
        state "scheduled (0)" as scheduled
        scheduled : Waiting for its slot.
        state "published (0)" as published
        published : Out in the world.
        published : tags: done
        state "spiked (0)" as spiked
        spiked : Dropped by an editor.
        state "withdrawn (0)" as withdrawn
        [*] --> draft
        draft --> review : submit [has_body]
        draft --> withdrawn : withdraw
        review --> published : accept [breaking]
        review --> scheduled : accept [has_slot & not_embargoed]
        review --> draft : request_changes
        review --> spiked : spike
        scheduled --> published : publish
        scheduled --> review : reopen
        scheduled --> scheduled : reschedule [has_slot]
        review --> review : submit (no change)
        published --> published : publish (no change)
        published --> [*]
        spiked --> [*]
        withdrawn --> [*]
        classDef terminal stroke-width:3px
        class published, spiked, withdrawn terminal
      "
    `);
  });
});

describe('escaping', () => {
  const hostile: VizGraph = {
    id: 'm',
    description: 'line one\nline "two" \\ end',
    states: [
      { id: 'a', initial: true, terminal: false, description: 'say "hi"; <b>#1</b>', tags: ['x"y'], count: 0 },
      { id: 'b', initial: false, terminal: true, description: null, tags: [], count: 12 },
    ],
    transitions: [{ from: 'a', to: 'b', event: 'go', guard: 'g', message: 'no "way"\nat all', description: null }],
    repeats: [],
  };

  it('keeps dot strings whole: quotes and backslashes escaped, newlines as \\n', () => {
    const dot = renderDot(hostile);
    expect(dot).toContain('label="line one\\nline \\"two\\" \\\\ end";');
    expect(dot).toContain('"a" [label="a (0)\\ntags: x\\"y", tooltip="say \\"hi\\"; <b>#1</b>"];');
    expect(dot).toContain('"a" -> "b" [label="go [g]", tooltip="no \\"way\\"\\nat all"];');
    expect(dot).toContain('"b" [label="b (12)", peripheries=2];');
  });

  it('writes mermaid syntax characters as entity codes and folds newlines', () => {
    const mermaid = renderMermaid(hostile);
    expect(mermaid).toContain('  a : say #quot;hi#quot;#59; #lt;b#gt;#35;1#lt;/b#gt;');
    expect(mermaid).toContain('  a : tags: x#quot;y');
    expect(mermaid).toContain('  %% m: line one line "two" \\ end');
    expect(mermaid).not.toContain('b --> b');
  });
});
