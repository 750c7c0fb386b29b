import nodemailer from 'nodemailer';

import type { Mailer } from './outreach.js';

export interface SmtpOptions {
  /** `smtp://user:pass@host:587` (STARTTLS when the server offers it) or `smtps://…:465`. */
  url: string;
  /** The sender, e.g. `Ada <ada@example.com>`. */
  from: string;
}

/** Outreach mail over SMTP (nodemailer); `describe` names the server without its password. */
export function smtpMailer(o: SmtpOptions): { send: Mailer; from: string; describe: string; close(): void } {
  const transport = nodemailer.createTransport(o.url);
  const u = new URL(o.url);
  return {
    from: o.from,
    describe: `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'smtps:' ? 465 : 587)}`,
    async send(mail) {
      const info = await transport.sendMail({ from: o.from, to: mail.to, subject: mail.subject, text: mail.text });
      return { messageId: info.messageId };
    },
    close: () => transport.close(),
  };
}
