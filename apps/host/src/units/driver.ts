/**
 * How the host talks to a unit (a machine it controls). A driver opens a link to its device; the
 * link carries command lines one way and answer lines back. The simulated driver is a device model
 * in this process; a serial line or a network socket plugs in by speaking the same line protocol
 * (see socket.ts):
 *
 * - commands: `PING`, `STATUS`, `ARM`, `RUN <step>; <step>; …`, `STOP`, `SET <name> <value>`, and
 *   whatever else the device understands (send_command passes a line as is);
 * - each command is answered by one line starting `OK` or `ERR`;
 * - lines starting `EVENT` come unasked (a program's progress, a fault).
 */
export interface UnitLink {
  /** Sends one command line (no newline in it). */
  write(line: string): Promise<void>;
  close(): Promise<void>;
}

export interface LinkEvents {
  /** A line from the device. */
  line(text: string): void;
  /** The link ended (the device hung up, the cable was pulled). */
  closed(reason?: string): void;
}

export interface UnitDriver {
  /** `simulated`, `socket`, ... */
  readonly kind: string;
  /** What list_units shows about the device (its model, its address): nothing secret. */
  describe(): Record<string, unknown>;
  /** Opens a link to the device. */
  connect(events: LinkEvents): Promise<UnitLink>;
}

/** A command line the host will send: printable, one line, not too long. */
export const COMMAND_LINE_RE = /^[\x20-\x7e]{1,512}$/;
